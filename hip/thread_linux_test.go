package hip

import (
	"syscall"
	"testing"
)

// TestThreadLocked: every call a thread runs lands on one OS thread,
// whichever goroutine asks.
func TestThreadLocked(t *testing.T) {
	th := newThread()
	defer th.stop()
	var first int
	th.do(func() { first = syscall.Gettid() })
	done := make(chan int, 8)
	for range 8 {
		go func() {
			var tid int
			th.do(func() { tid = syscall.Gettid() })
			done <- tid
		}()
	}
	for range 8 {
		if tid := <-done; tid != first {
			t.Fatalf("call ran on thread %d, not %d", tid, first)
		}
	}
}
