package files

import (
	"log/slog"
	"strings"

	"github.com/parley-bots/parley/internal/model"
	"github.com/parley-bots/parley/internal/store"
)

// Caller is an authenticated Files API caller acting on one bot: the bot
// itself (a bot API key or bot token) or a workspace member with a role
// (a personal access token). The HTTP layer authenticates with the
// Runtime API's credentials and hands this over.
type Caller struct {
	BotID string
	Bot   bool
	Role  model.Role
}

// readOps are the operations a viewer may call; the others need
// model.PermWriteBots (developer and up).
var readOps = map[string]bool{"getFile": true, "listFiles": true, "searchFiles": true, "listFilePassages": true,
	"listFileTags": true, "listFileTagValues": true, "listKnowledgeBases": true}

func (c Caller) require(op string) error {
	if c.Bot {
		return nil
	}
	perm := model.PermWriteBots
	if readOps[op] {
		perm = model.PermRead
	}
	if !c.Role.Can(perm) {
		return model.Forbidden("your role %q in this workspace does not allow you to %s (%s)", c.Role, perm, op)
	}
	return nil
}

// API is the Files API: one type per resource.
type API struct {
	Files          *Library
	Passages       *Passages
	KnowledgeBases *KnowledgeBases
	Indexer        *Indexer

	models     Models
	log        *slog.Logger
	answerDown breaker // the answer-generation endpoint failed recently
}

// NewAPI returns the Files API's use cases over st, contents in blobs;
// URLs start with publicURL; models are the optional model endpoints
// (zero: none). Its Indexer must be started.
func NewAPI(st store.Store, blobs Blobs, publicURL string, models Models, log *slog.Logger) *API {
	if log == nil {
		log = slog.Default()
	}
	ix := &Indexer{store: st, blobs: blobs, embedder: models.Embedder, log: log, wake: make(chan struct{}, 1), done: make(chan struct{})}
	lib := &Library{store: st, blobs: blobs, base: strings.TrimRight(publicURL, "/"), indexer: ix}
	return &API{Files: lib, Passages: &Passages{store: st, lib: lib, models: models, log: log}, KnowledgeBases: &KnowledgeBases{store: st},
		Indexer: ix, models: models, log: log}
}
