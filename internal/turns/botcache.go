package turns

import (
	"context"
	"time"

	"github.com/parley-bots/parley/internal/model"
	"github.com/parley-bots/parley/internal/readcache"
)

// Every turn needs its bot's row and its deployed version's code: two
// reads of the store per turn, and the code is the largest column read on
// the hot path. Both are cached:
//   - a bot for botCacheTTL, forgotten on this node when administration
//     says it changed (BotChanged, after the commit); a change made on
//     another node reaches this one's turns within the TTL, as it reaches
//     its Chat API caches;
//   - a version for good, since a version is never changed once stored
//     (a deploy adds one and points the bot at it).
//
// Cached values are shared between turns: they are read, never changed.
type botCache struct {
	bots     readcache.TTL[string, *model.Bot]
	versions readcache.TTL[versionKey, *model.BotVersion]
}

type versionKey struct{ bot, version string }

const (
	botCacheTTL = time.Second
	// maxVersions bounds the versions kept (each holds its code).
	maxVersions = 256
)

func newBotCache() *botCache {
	c := &botCache{}
	c.versions.Max = maxVersions
	return c
}

// bot returns the bot with id, from the cache or the store.
func (rt *Runtime) bot(ctx context.Context, id string) (*model.Bot, error) {
	if b, ok := rt.cache.bots.Get(id); ok {
		return b, nil
	}
	gen := rt.cache.bots.Generation()
	b, err := rt.store.Bots().GetByID(ctx, id)
	if err != nil {
		return nil, err
	}
	rt.cache.bots.Put(id, b, gen, botCacheTTL)
	return b, nil
}

// version returns the bot's deployed version, from the cache or the
// store.
func (rt *Runtime) version(ctx context.Context, b *model.Bot) (*model.BotVersion, error) {
	k := versionKey{b.ID, b.VersionID}
	if v, ok := rt.cache.versions.Get(k); ok {
		return v, nil
	}
	v, err := rt.store.Bots().GetVersion(ctx, b.ID, b.VersionID)
	if err != nil {
		return nil, err
	}
	rt.cache.versions.Put(k, v, 0, 24*time.Hour) // immutable: never invalidated, generation 0
	return v, nil
}

// ForgetBots is told that another node changed a bot (the PostgreSQL
// broker's notifications), or that this node may have missed such a
// change: the cached bots are forgotten and the scheduler reloads its
// workflow bots. Unlike BotChanged, nothing is sent to an SDK bot: the
// node where the change was made does that once.
func (rt *Runtime) ForgetBots() {
	rt.cache.bots.Invalidate()
	rt.workflows.botsChanged()
}
