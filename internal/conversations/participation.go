package conversations

// The participant check of the Chat and Webchat APIs: a cached answer, a
// read, or, for a new message whose cached answer expired, a check in the
// message's own transaction.

import (
	"context"

	"github.com/parley-bots/parley/internal/model"
)

// requireParticipant is at most one read on the hot path (a participant
// implies the conversation exists), none when the participation is cached
// (cache.go); only a refusal reads the conversation, to tell 404 from
// 403.
func (s *Chat) requireParticipant(ctx context.Context, c *Caller, convID string) error {
	pc := &s.cache.participants
	k := participationOf(c, convID)
	if _, ok := pc.Get(k); ok {
		return nil
	}
	gen := pc.Generation()
	ok, err := s.store.Chat().IsParticipant(ctx, c.BotID, convID, c.UserID)
	if err != nil {
		return err
	}
	if ok {
		pc.Put(k, true, gen, s.cache.ttl())
		return nil
	}
	if _, err := s.conversation(ctx, c.BotID, convID); err != nil {
		return err
	}
	return model.Forbidden("You are not a participant in this conversation")
}

// participation is requireParticipant for a user's new message. Where
// the user's participation was cached and the entry expired (the user
// posted there before, longer ago than the cache keeps answers), it reads
// nothing: the message's transaction checks it instead (Chat.RequireParticipant, one
// statement of the group commit's batch rather than a read of its own, a
// round trip on PostgreSQL), and recheck tells the caller so. A message of
// someone who is no longer a participant then stores nothing, as when the
// read refused it; only its bot's turn may have run (its effects wait for
// the commit, or for a commit of the message alone, which fails the same).
func (s *Chat) participation(ctx context.Context, c *Caller, convID string) (recheck *participationCheck, err error) {
	pc := &s.cache.participants
	k := participationOf(c, convID)
	if _, ok := pc.Expired(k); ok {
		return &participationCheck{s: s, c: c, convID: convID, gen: pc.Generation()}, nil
	}
	return nil, s.requireParticipant(ctx, c, convID)
}

// participationCheck is a participation left for the message's
// transaction to check (participation).
type participationCheck struct {
	s      *Chat
	c      *Caller
	convID string
	gen    uint64 // the cache's generation before the commit
}

// held caches the participation the committed message's transaction saw.
func (p *participationCheck) held() {
	p.s.cache.participants.Put(participationOf(p.c, p.convID), true, p.gen, p.s.cache.ttl())
}

// refused is the error of a message whose transaction found its user no
// longer a participant: the entry is forgotten, and the store read tells
// a conversation gone (404) from a participation removed (403).
func (p *participationCheck) refused(ctx context.Context) error {
	p.s.cache.participants.Forget(participationOf(p.c, p.convID))
	if err := p.s.requireParticipant(ctx, p.c, p.convID); err != nil {
		return err
	}
	// A participant again by now: the message was refused all the same.
	return model.Forbidden("You are not a participant in this conversation")
}

// participationOf is the cache key of c's participation in a conversation.
func participationOf(c *Caller, convID string) participantKey {
	return participantKey{c.BotID, convID, c.UserID}
}
