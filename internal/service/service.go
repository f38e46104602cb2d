// Package service holds Parley's use cases and authorization: every business
// rule lives here, between the HTTP handlers and the store.
package service

import (
	"context"
	"log/slog"
	"strings"

	"github.com/parley-bots/parley/internal/model"
	"github.com/parley-bots/parley/internal/store"
)

// Publisher fans a committed signal out to the conversation's listeners.
// It is called only after the transaction that stored the signal commits.
type Publisher interface {
	Publish(sig *model.Signal)
}

// TurnNotifier is told that a conversation has a new pending turn.
type TurnNotifier interface {
	Notify(ref model.ConversationRef)
}

// Compiler checks bot code before it is accepted.
type Compiler interface {
	Compile(versionID, code string) error
}

// Options configure a Service.
type Options struct {
	Store     store.DB
	Log       *slog.Logger
	PublicURL string
	Publisher Publisher
	Turns     TurnNotifier
	Compiler  Compiler
}

// Service implements the use cases of every interface.
type Service struct {
	store     store.DB
	log       *slog.Logger
	publicURL string
	pub       Publisher
	turns     TurnNotifier
	compiler  Compiler
	chat      chatState // Chat API and turn pipeline state (chat.go)
	fileBlobs Blobs     // where uploaded file contents live (files.go)
}

// New returns a Service. Nil collaborators are replaced by no-ops.
func New(o Options) *Service {
	s := &Service{store: o.Store, log: o.Log, publicURL: strings.TrimRight(o.PublicURL, "/"),
		pub: o.Publisher, turns: o.Turns, compiler: o.Compiler}
	if s.log == nil {
		s.log = slog.Default()
	}
	if s.pub == nil {
		s.pub = nopPublisher{}
	}
	if s.turns == nil {
		s.turns = nopTurns{}
	}
	return s
}

// SetPublisher and SetTurns wire collaborators created after the Service.
func (s *Service) SetPublisher(p Publisher) { s.pub = p }

// SetTurns sets the turn notifier.
func (s *Service) SetTurns(t TurnNotifier) { s.turns = t }

// SetCompiler sets the code checker.
func (s *Service) SetCompiler(c Compiler) { s.compiler = c }

// Store exposes the store to wiring code (cmd) and tests.
func (s *Service) Store() store.DB { return s.store }

// PublicURL is the base of URLs shown to users.
func (s *Service) PublicURL() string { return s.publicURL }

// Ready reports whether the store is reachable and its schema migrated.
func (s *Service) Ready(ctx context.Context) error {
	if err := s.store.Ping(ctx); err != nil {
		return err
	}
	return s.store.Migrated(ctx)
}

type nopPublisher struct{}

func (nopPublisher) Publish(*model.Signal) {}

type nopTurns struct{}

func (nopTurns) Notify(model.ConversationRef) {}
