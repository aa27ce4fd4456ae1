package workbench

import (
	"errors"
	"testing"

	"plexbench/internal/sysmem"
)

// TestInputSize: an input file is refused, naming it and what to do, when
// reading it would take more than the memory available; an unknown
// figure refuses nothing.
func TestInputSize(t *testing.T) {
	t.Parallel()
	a := sysmem.Avail{Bytes: 8 << 20, Known: true, From: "MemAvailable"}
	if err := checkInputSize("t.txt", "tokenizing", 1<<20, a); err != nil {
		t.Errorf("1 MiB of 8: %v", err)
	}
	err := checkInputSize("t.txt", "tokenizing", 1<<20+1, a)
	want := "not enough memory: reading and tokenizing t.txt of 1.0 MiB takes 8.0 MiB; 8.0 MiB is available (MemAvailable): give a shorter file"
	if !errors.Is(err, sysmem.ErrTooLarge) || err.Error() != want {
		t.Errorf("got %v\nwant %s", err, want)
	}
	if err := checkInputSize("t.txt", "tokenizing", 1<<40, sysmem.Avail{}); err != nil {
		t.Errorf("unknown memory: %v", err)
	}
}
