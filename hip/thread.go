package hip

import "runtime"

// thread runs every call into a vendor library on one goroutine locked to
// its OS thread: CUDA contexts and HIP's current device are per thread,
// and goroutines migrate.
type thread struct {
	work chan func()
}

func newThread() *thread {
	t := &thread{work: make(chan func())}
	go func() {
		runtime.LockOSThread() // never unlocked: the thread ends with the goroutine
		for f := range t.work {
			f()
		}
	}()
	return t
}

// do runs f on the thread and waits for it.
func (t *thread) do(f func()) {
	done := make(chan struct{})
	t.work <- func() {
		defer close(done)
		f()
	}
	<-done
}

// stop ends the thread; no call may follow.
func (t *thread) stop() { close(t.work) }
