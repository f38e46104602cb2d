package runtimeapi

import (
	"context"
	"log/slog"
	"sync"
	"time"
)

// Scheduler fires the Runtime API's timed work: scheduled events when
// due (each becomes a bot turn) and expired states (deleted, each with a
// state_expired event). Every node may run one: each event fires and each
// state expires once (conditional updates in the store).
type Scheduler struct {
	events *Events
	states *States
	log    *slog.Logger
	every  time.Duration

	stop chan struct{}
	wg   sync.WaitGroup
}

// NewScheduler returns a scheduler polling every `every` (1s when 0).
func NewScheduler(api *API, log *slog.Logger, every time.Duration) *Scheduler {
	if every <= 0 {
		every = time.Second
	}
	return &Scheduler{events: api.Events, states: api.States, log: log, every: every, stop: make(chan struct{})}
}

// Start runs the scheduler until Stop.
func (s *Scheduler) Start(ctx context.Context) {
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		t := time.NewTicker(s.every)
		defer t.Stop()
		for {
			select {
			case <-s.stop:
				return
			case <-ctx.Done():
				return
			case <-t.C:
				s.Tick(ctx, time.Now())
			}
		}
	}()
}

// Tick does the work due at now (tests call it directly).
func (s *Scheduler) Tick(ctx context.Context, now time.Time) {
	if _, err := s.events.fireDue(ctx, now); err != nil {
		s.log.Warn("runtime api: firing scheduled events", "err", err)
	}
	if _, err := s.states.expire(ctx, now); err != nil {
		s.log.Warn("runtime api: expiring states", "err", err)
	}
}

// Stop stops the scheduler and waits for it.
func (s *Scheduler) Stop() {
	close(s.stop)
	s.wg.Wait()
}
