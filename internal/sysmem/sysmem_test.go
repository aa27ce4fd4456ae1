package sysmem

import (
	"errors"
	"io/fs"
	"testing"
)

// files is a readFile over a map.
func files(m map[string]string) readFile {
	return func(name string) ([]byte, error) {
		if s, ok := m[name]; ok {
			return []byte(s), nil
		}
		return nil, fs.ErrNotExist
	}
}

const meminfo = "MemTotal:       24683744 kB\nMemFree:        20000000 kB\nMemAvailable:   16000000 kB\n"

func TestAvailable(t *testing.T) {
	cases := []struct {
		name  string
		files map[string]string
		want  Avail
	}{
		{"nothing readable", nil, Avail{}},
		{"meminfo only", map[string]string{"/proc/meminfo": meminfo}, Avail{16000000 * 1024, true, "MemAvailable"}},
		{"v2 without a limit", map[string]string{
			"/proc/meminfo": meminfo, "/proc/self/cgroup": "0::/user.slice\n",
			"/sys/fs/cgroup/user.slice/memory.max": "max\n",
		}, Avail{16000000 * 1024, true, "MemAvailable"}},
		{"v2 limit under MemAvailable", map[string]string{
			"/proc/meminfo": meminfo, "/proc/self/cgroup": "0::/job\n",
			"/sys/fs/cgroup/job/memory.max":     "4294967296\n",
			"/sys/fs/cgroup/job/memory.current": "1073741824\n",
			"/sys/fs/cgroup/job/memory.stat":    "anon 1\ninactive_file 536870912\nactive_file 2\n",
		}, Avail{4<<30 - (1<<30 - 1<<29), true, "the cgroup's memory limit"}},
		{"v2 parent's limit is the least", map[string]string{
			"/proc/meminfo": meminfo, "/proc/self/cgroup": "0::/a/b\n",
			"/sys/fs/cgroup/a/b/memory.max":     "max\n",
			"/sys/fs/cgroup/a/memory.max":       "2147483648\n",
			"/sys/fs/cgroup/a/memory.current":   "1073741824\n",
			"/sys/fs/cgroup/a/b/memory.current": "5\n",
		}, Avail{1 << 30, true, "the cgroup's memory limit"}},
		{"v2 namespace: the mount's root", map[string]string{
			"/proc/meminfo": meminfo, "/proc/self/cgroup": "0::/\n",
			"/sys/fs/cgroup/memory.max":     "1073741824\n",
			"/sys/fs/cgroup/memory.current": "0\n",
		}, Avail{1 << 30, true, "the cgroup's memory limit"}},
		{"v2 limit over MemAvailable", map[string]string{
			"/proc/meminfo": meminfo, "/proc/self/cgroup": "0::/job\n",
			"/sys/fs/cgroup/job/memory.max": "1099511627776\n",
		}, Avail{16000000 * 1024, true, "MemAvailable"}},
		{"v1 unlimited", map[string]string{
			"/proc/meminfo": meminfo, "/proc/self/cgroup": "4:memory:/process_api/x\n0::/\n",
			"/sys/fs/cgroup/memory/process_api/x/memory.stat":           "hierarchical_memory_limit 9223372036854771712\ntotal_inactive_file 5\n",
			"/sys/fs/cgroup/memory/process_api/x/memory.usage_in_bytes": "76550144\n",
		}, Avail{16000000 * 1024, true, "MemAvailable"}},
		{"v1 limited", map[string]string{
			"/proc/meminfo": meminfo, "/proc/self/cgroup": "9:cpu,memory:/job\n",
			"/sys/fs/cgroup/memory/job/memory.stat":           "inactive_file 7\nhierarchical_memory_limit 2147483648\ntotal_inactive_file 1048576\n",
			"/sys/fs/cgroup/memory/job/memory.usage_in_bytes": "3145728\n",
		}, Avail{2<<30 - 2<<20, true, "the cgroup's memory limit"}},
		{"v1 over its limit", map[string]string{
			"/proc/meminfo": meminfo, "/proc/self/cgroup": "4:memory:/job\n",
			"/sys/fs/cgroup/memory/job/memory.stat":           "hierarchical_memory_limit 1048576\n",
			"/sys/fs/cgroup/memory/job/memory.usage_in_bytes": "2097152\n",
		}, Avail{0, true, "the cgroup's memory limit"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := available(files(c.files)); got != c.want {
				t.Errorf("got %+v, want %+v", got, c.want)
			}
		})
	}
}

func TestCheck(t *testing.T) {
	kv := Ask{What: "a KV cache of 4194304 positions", Flag: "--kv-len", Bytes: 40 << 30}
	pass := Ask{What: "the pass buffers of 512 tokens", Flag: "--ubatch-size", Bytes: 1 << 30}
	if err := Check(Avail{Bytes: 42 << 30, Known: true, From: "MemAvailable"}, kv, pass); err != nil {
		t.Errorf("41 GiB of 42: %v", err)
	}
	if err := Check(Avail{}, kv, pass); err != nil {
		t.Errorf("unknown memory: %v", err)
	}
	err := Check(Avail{Bytes: 20 << 30, Known: true, From: "MemAvailable"}, pass, kv)
	want := "not enough memory: a KV cache of 4194304 positions (--kv-len) takes 40.0 GiB, 41.0 GiB in all; 20.0 GiB is available (MemAvailable): lower --kv-len"
	if !errors.Is(err, ErrTooLarge) || err.Error() != want {
		t.Errorf("got %v\nwant %s", err, want)
	}
	err = Check(Avail{Bytes: 1 << 20, Known: true, From: "x"}, Ask{What: "reading a text of 1.0 MiB", Fix: "give a shorter text", Bytes: 1<<20 + 1})
	want = "not enough memory: reading a text of 1.0 MiB takes 1.0 MiB; 1.0 MiB is available (x): give a shorter text"
	if err == nil || err.Error() != want {
		t.Errorf("one byte over:\n got %v\nwant %s", err, want)
	}
}

func TestSize(t *testing.T) {
	for n, want := range map[int64]string{0: "0 B", 1023: "1023 B", 1024: "1.0 KiB", 3 << 20: "3.0 MiB", 64 << 30: "64.0 GiB", 1 << 40: "1.0 TiB"} {
		if got := Size(n); got != want {
			t.Errorf("Size(%d) = %q, want %q", n, got, want)
		}
	}
}
