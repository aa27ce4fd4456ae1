// Package sysmem owns what a run may allocate: the memory available to
// this process (Linux: MemAvailable from /proc/meminfo, under the memory
// limit of its cgroup, v1 or v2, less what the cgroup already uses; other
// systems: unknown) and the check that refuses, in one line, a run that
// asks for more, naming the flag that sized the request.
//
// It imports only the standard library, so that every layer can use it.
package sysmem

import (
	"errors"
	"fmt"
	"os"
	"path"
	"strconv"
	"strings"
)

// ErrTooLarge is what Check refuses with.
var ErrTooLarge = errors.New("not enough memory")

// Avail is the memory this process may still allocate.
type Avail struct {
	Bytes int64
	Known bool   // false: nothing says (not Linux, or /proc unreadable); Check then passes
	From  string // what bounds it: "MemAvailable", "the cgroup's memory limit"
}

// Available is the memory this process may still allocate now.
func Available() Avail { return available(os.ReadFile) }

// readFile reads a file whole; tests give a map's.
type readFile func(name string) ([]byte, error)

// available is Available over read: MemAvailable, lowered to what the
// cgroup's limit leaves when that is less.
func available(read readFile) Avail {
	var a Avail
	if data, err := read("/proc/meminfo"); err == nil {
		if kb, ok := field(string(data), "MemAvailable:"); ok {
			a = Avail{Bytes: kb * 1024, Known: true, From: "MemAvailable"}
		}
	}
	if left, ok := cgroupLeft(read); ok && (!a.Known || left < a.Bytes) {
		a = Avail{Bytes: left, Known: true, From: "the cgroup's memory limit"}
	}
	return a
}

// cgroupLeft is what the memory limit of this process's cgroup leaves
// (limit − usage, page cache that can be dropped not counted as usage),
// or false when no limit is set or none can be read.
func cgroupLeft(read readFile) (int64, bool) {
	data, err := read("/proc/self/cgroup")
	if err != nil {
		return 0, false
	}
	for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		parts := strings.SplitN(line, ":", 3)
		if len(parts) != 3 {
			continue
		}
		switch {
		case parts[0] == "0" && parts[1] == "":
			if left, ok := cgroupV2Left(read, parts[2]); ok {
				return left, true
			}
		case hasController(parts[1], "memory"):
			if left, ok := cgroupV1Left(read, parts[2]); ok {
				return left, true
			}
		}
	}
	return 0, false
}

func hasController(list, name string) bool {
	for _, c := range strings.Split(list, ",") {
		if c == name {
			return true
		}
	}
	return false
}

// cgroupV2Left is the least any cgroup from the process's up to the root
// leaves under its memory.max. A process in a cgroup namespace sees its
// own cgroup as the root of the mount: the path is then not under it.
func cgroupV2Left(read readFile, cg string) (int64, bool) {
	const root = "/sys/fs/cgroup"
	dir := path.Join(root, cg)
	if _, err := read(path.Join(dir, "memory.max")); err != nil {
		dir = root
	}
	var best int64
	found := false
	for {
		if left, ok := v2Left(read, dir); ok && (!found || left < best) {
			best, found = left, true
		}
		if dir == root {
			return best, found
		}
		dir = path.Dir(dir)
	}
}

func v2Left(read readFile, dir string) (int64, bool) {
	text, err := read(path.Join(dir, "memory.max"))
	if err != nil {
		return 0, false
	}
	limit, err := strconv.ParseInt(strings.TrimSpace(string(text)), 10, 64)
	if err != nil {
		return 0, false // "max": no limit here
	}
	used := int64(0)
	if cur, err := read(path.Join(dir, "memory.current")); err == nil {
		used, _ = strconv.ParseInt(strings.TrimSpace(string(cur)), 10, 64)
	}
	if stat, err := read(path.Join(dir, "memory.stat")); err == nil {
		if inactive, ok := field(string(stat), "inactive_file"); ok {
			used -= inactive
		}
	}
	return max(limit-max(used, 0), 0), true
}

// cgroupV1Left is what the memory controller's hierarchical limit leaves
// in the process's cgroup (or in the mount's root, under a namespace).
func cgroupV1Left(read readFile, cg string) (int64, bool) {
	const root = "/sys/fs/cgroup/memory"
	dir := path.Join(root, cg)
	stat, err := read(path.Join(dir, "memory.stat"))
	if err != nil {
		dir = root
		if stat, err = read(path.Join(dir, "memory.stat")); err != nil {
			return 0, false
		}
	}
	limit, ok := field(string(stat), "hierarchical_memory_limit")
	if !ok {
		lim, err := read(path.Join(dir, "memory.limit_in_bytes"))
		if err != nil {
			return 0, false
		}
		if limit, err = strconv.ParseInt(strings.TrimSpace(string(lim)), 10, 64); err != nil {
			return 0, false
		}
	}
	if limit >= 1<<62 {
		return 0, false // the kernel's "unlimited" (page-rounded MaxInt64)
	}
	used := int64(0)
	if u, err := read(path.Join(dir, "memory.usage_in_bytes")); err == nil {
		used, _ = strconv.ParseInt(strings.TrimSpace(string(u)), 10, 64)
	}
	if inactive, ok := field(string(stat), "total_inactive_file"); ok {
		used -= inactive
	}
	return max(limit-max(used, 0), 0), true
}

// field is the integer after key on the line that starts with it
// ("MemAvailable:   23995728 kB", "inactive_file 438272").
func field(text, key string) (int64, bool) {
	for _, line := range strings.Split(text, "\n") {
		rest, ok := strings.CutPrefix(line, key)
		if !ok || (rest != "" && rest[0] != ' ' && rest[0] != '\t' && key[len(key)-1] != ':') {
			continue
		}
		f := strings.Fields(rest)
		if len(f) == 0 {
			continue
		}
		v, err := strconv.ParseInt(f[0], 10, 64)
		if err != nil || v < 0 {
			return 0, false
		}
		return v, true
	}
	return 0, false
}

// Ask is one allocation a run would make: its bytes, what it is, the
// flag that sizes it and what to do instead.
type Ask struct {
	What  string // "a KV cache of 4194304 positions"
	Flag  string // "--kv-len" ("" when no flag sizes it)
	Fix   string // what to do instead ("": "lower " + Flag)
	Bytes int64
}

// Check refuses asks whose total exceeds a, in one line: the largest ask,
// its bytes and flag, what they need in all (when that reads differently),
// what is available and what bounds it, and what to do. An unknown a
// passes.
func Check(a Avail, asks ...Ask) error {
	if !a.Known || len(asks) == 0 {
		return nil
	}
	var total int64
	big := 0
	for i, k := range asks {
		total += k.Bytes
		if k.Bytes > asks[big].Bytes {
			big = i
		}
	}
	if total <= a.Bytes {
		return nil
	}
	k := asks[big]
	flag, all, fix := "", "", k.Fix
	if k.Flag != "" {
		flag = " (" + k.Flag + ")"
	}
	if Size(total) != Size(k.Bytes) {
		all = ", " + Size(total) + " in all"
	}
	if fix == "" {
		fix = "lower " + k.Flag
	}
	return fmt.Errorf("%w: %s%s takes %s%s; %s is available (%s): %s",
		ErrTooLarge, k.What, flag, Size(k.Bytes), all, Size(a.Bytes), a.From, fix)
}

// Size formats a byte count for a message: "512 B", "3.2 MiB", "64.0 GiB".
func Size(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	v, i := float64(n)/unit, 0
	for v >= unit && i < 4 {
		v /= unit
		i++
	}
	return fmt.Sprintf("%.1f %ciB", v, "KMGTP"[i])
}
