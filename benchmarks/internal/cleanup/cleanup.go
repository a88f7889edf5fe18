// Package cleanup keeps what a benchmark must undo (processes to stop,
// files to close, databases to drop) and undoes it, last registered first,
// each once: at the end of the run, and from a signal handler when the run
// is interrupted.
package cleanup

import "sync"

// Stack is the list of cleanups; its zero value is ready.
type Stack struct {
	mu  sync.Mutex
	fns []func()
}

// Defer registers fn to run at Run, after every function registered later.
func (s *Stack) Defer(fn func()) {
	var once sync.Once
	s.mu.Lock()
	s.fns = append(s.fns, func() { once.Do(fn) })
	s.mu.Unlock()
}

// Run runs every registered function, last registered first, and forgets
// them: a second Run (the signal handler's and the end's) does nothing again.
func (s *Stack) Run() {
	s.mu.Lock()
	fns := s.fns
	s.fns = nil
	s.mu.Unlock()
	for i := len(fns) - 1; i >= 0; i-- {
		fns[i]()
	}
}
