package kernels

import (
	"runtime"
	"sync"
)

// Pool is a persistent set of worker goroutines that run data-parallel
// loops. A nil *Pool runs everything on the calling goroutine.
type Pool struct {
	n    int
	jobs chan poolJob
	once sync.Once
	wgs  chan *sync.WaitGroup // idle WaitGroups, so For does not allocate one per call
}

type poolJob struct {
	fn     func(worker, lo, hi int)
	lo, hi int
	worker int
	wg     *sync.WaitGroup
}

// NewPool starts a pool of n workers; n <= 0 means one per CPU.
func NewPool(n int) *Pool {
	if n <= 0 {
		n = runtime.NumCPU()
	}
	p := &Pool{n: n, jobs: make(chan poolJob, n), wgs: make(chan *sync.WaitGroup, 4)}
	for i := 1; i < n; i++ { // worker 0 is the caller
		go func() {
			for j := range p.jobs {
				j.fn(j.worker, j.lo, j.hi)
				j.wg.Done()
			}
		}()
	}
	return p
}

// Threads is the number of workers, including the calling goroutine.
func (p *Pool) Threads() int {
	if p == nil {
		return 1
	}
	return p.n
}

// Close stops the workers. The pool must not be used afterwards.
func (p *Pool) Close() {
	if p != nil {
		p.once.Do(func() { close(p.jobs) })
	}
}

// For splits [0, n) into at most Threads() contiguous ranges, each at
// least grain long, and runs fn on them in parallel; worker is a dense
// index in [0, Threads()) usable for per-worker scratch. It returns when
// all ranges are done.
func (p *Pool) For(n, grain int, fn func(worker, lo, hi int)) {
	if n <= 0 {
		return
	}
	if grain < 1 {
		grain = 1
	}
	parts := p.Threads()
	if m := (n + grain - 1) / grain; m < parts {
		parts = m
	}
	if parts <= 1 {
		fn(0, 0, n)
		return
	}
	var wg *sync.WaitGroup
	select {
	case wg = <-p.wgs:
	default:
		wg = new(sync.WaitGroup)
	}
	wg.Add(parts - 1)
	for i := 1; i < parts; i++ {
		p.jobs <- poolJob{fn: fn, lo: i * n / parts, hi: (i + 1) * n / parts, worker: i, wg: wg}
	}
	fn(0, 0, n/parts)
	wg.Wait()
	select {
	case p.wgs <- wg:
	default:
	}
}
