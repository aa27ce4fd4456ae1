package outfile

import (
	"fmt"
	"os"
)

// CheckInput refuses, at once, an input path that is not a regular file
// (after symlinks): a FIFO would block the open (or the read) forever, a
// socket cannot be read as a file, a device such as /dev/zero never ends,
// and a directory is not a file. The error names the path and what it is.
func CheckInput(path string) error {
	_, err := StatInput(path)
	return err
}

// StatInput is CheckInput that also returns the file's information.
func StatInput(path string) (os.FileInfo, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("%s: %s, not a regular file", path, kind(fi.Mode()))
	}
	return fi, nil
}

// kind names a non-regular file mode.
func kind(m os.FileMode) string {
	switch {
	case m.IsDir():
		return "is a directory"
	case m&os.ModeNamedPipe != 0:
		return "is a FIFO"
	case m&os.ModeSocket != 0:
		return "is a socket"
	case m&os.ModeCharDevice != 0:
		return "is a character device"
	case m&os.ModeDevice != 0:
		return "is a block device"
	}
	return "is " + m.Type().String()
}
