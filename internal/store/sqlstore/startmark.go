package sqlstore

import (
	"encoding/binary"
	"hash/maphash"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/parley-bots/parley/internal/store"
)

// A start that still holds, told without reading it (issue 18). A folded
// message whose turn began from the start its conversation's last turn kept
// checks, in its commit, that the store still holds that start
// (States.RequireTurnStart): on SQLite a read of the user, the
// conversation, three states and the handoffs on the group commit's single
// writer, 5.4 % of the server's CPU in the closed loop. Where every write
// that may change a start goes through this process (Dialect.LocalWrites:
// SQLite, whose server holds its database file alone), the store counts
// those writes instead, and a start read while none was running holds as
// long as none began since: no read at all.

// startChanges counts, in one word, the writes that may change what a turn
// starts with (startWrite): how many began, in the high bits, and how many
// are still running (begun, not yet committed or rolled back), in the low
// bits. A write begins before its statement runs and ends after its
// transaction's COMMIT or ROLLBACK, so a write that committed after a start
// was read began after the start's mark was taken or was running then
// (which leaves the start no mark); either way the counter has moved by the
// check.
type startChanges struct {
	v atomic.Uint64 // began<<runningBits | running; began starts at 1, so no mark is 0
	// kinds caches startWrite's answer per query text (queries are a fixed
	// set of shapes; past maxKinds, they are looked at every time).
	kinds  sync.Map // query -> bool
	nkinds atomic.Int32
	// unended is set once a change ran whose end the store cannot see
	// (statement's rows): no start is marked from then on.
	unended atomic.Bool
}

const (
	runningBits = 20
	runningMask = 1<<runningBits - 1
	maxKinds    = 4096
)

func newStartChanges() *startChanges {
	c := &startChanges{}
	c.v.Store(1 << runningBits)
	return c
}

func (c *startChanges) begin() { c.v.Add(1<<runningBits + 1) }
func (c *startChanges) end()   { c.v.Add(^uint64(0)) } // running - 1

// mark is the count to read a start against: 0 (none) while a write that
// may change it is running.
func (c *startChanges) mark() uint64 {
	if v := c.v.Load(); v&runningMask == 0 && !c.unended.Load() {
		return v
	}
	return 0
}

// unchangedSince tells that no write that may change a start began since
// mark was taken, and none is running.
func (c *startChanges) unchangedSince(mark uint64) bool {
	return mark != 0 && c.v.Load() == mark && !c.unended.Load()
}

// changes tells whether q may change what a turn starts with.
func (c *startChanges) changes(q string) bool {
	if v, ok := c.kinds.Load(q); ok {
		return v.(bool)
	}
	w := startWrite(q)
	if c.nkinds.Load() < maxKinds {
		if _, loaded := c.kinds.LoadOrStore(q, w); !loaded {
			c.nkinds.Add(1)
		}
	}
	return w
}

// writeTo finds the statements that write a table: the tables of a turn's
// start (States.GetTurn, with the handoffs GetIdleTurn and the check read)
// and those whose deletes cascade to them.
var writeTo = regexp.MustCompile(`(?is)\b(?:INSERT\s+(?:OR\s+\w+\s+)?INTO|REPLACE\s+INTO|UPDATE|DELETE\s+FROM)\s+` +
	`(chat_users|conversations|states|handoffs|bots|workspaces|accounts)\b(?:\s+SET\s+(.*?)(?:\s+WHERE\b|$))?`)

// startWrite tells whether q writes a table of a turn's start, other than
// an update of a conversation's counters alone (last_seq and turn_seq,
// which every message moves and no start holds).
func startWrite(q string) bool {
	for _, m := range writeTo.FindAllStringSubmatch(q, -1) {
		if !strings.EqualFold(m[1], "conversations") || !onlyCounters(m[2]) {
			return true
		}
	}
	return false
}

// onlyCounters tells whether an UPDATE's SET list assigns last_seq or
// turn_seq and nothing else.
func onlyCounters(set string) bool {
	if strings.TrimSpace(set) == "" {
		return false
	}
	for _, a := range strings.Split(set, ",") {
		col, _, ok := strings.Cut(strings.TrimSpace(a), "=")
		if col = strings.ToLower(strings.TrimSpace(col)); !ok || (col != "last_seq" && col != "turn_seq") {
			return false
		}
	}
	return true
}

// The store's side: its statements, its transactions' ends, its reads of
// a start and its checks. Methods of startChanges, not of Store (which
// has enough), each a no-op on a nil one (an engine without LocalWrites).

// statement is called before s runs q: a statement that may change a start
// begins a change, which ends with its transaction (txEnded) or, outside
// one, when done is called once the statement ran. A query's rows may
// still be running when it returns, so after a change read as rows outside
// a transaction no start is marked any more (each is checked by reading
// it), the safe side.
func (c *startChanges) statement(s *Store, q string, rows bool) (done func()) {
	if c == nil || !c.changes(q) {
		return nothing
	}
	if s.inTx {
		if !s.changeOpen {
			s.changeOpen = true
			c.begin()
		}
		return nothing
	}
	if rows {
		c.unended.Store(true)
		return nothing
	}
	c.begin()
	return c.end
}

func nothing() {}

// txEnded ends the change s's transaction began, once it committed or
// rolled back.
func (c *startChanges) txEnded(s *Store) {
	if c != nil && s.changeOpen {
		s.changeOpen = false
		c.end()
	}
}

// markFor is the mark s reads a start against, taken before the read: 0
// in a transaction (whose snapshot may be older than the mark) or where
// writes do not all go through this process.
func (c *startChanges) markFor(s *Store) uint64 {
	if c == nil || s.inTx {
		return 0
	}
	return c.mark()
}

// marked gives start the mark taken before it was read, with its sum.
func marked(mark uint64, botID, userID, conversationID string, start *store.TurnStart) {
	if mark != 0 {
		start.Mark = store.StartMark{Changes: mark, Sum: startSum(botID, userID, conversationID, start)}
	}
}

// holdsUnread tells that start holds without reading it: it was read by
// this store with no write that may change it since, and is as read (its
// sum: a start changed since, such as the states a turn wrote into the one
// it keeps, is checked by reading).
func (c *startChanges) holdsUnread(botID, userID, conversationID string, start *store.TurnStart) bool {
	return c != nil && c.unchangedSince(start.Mark.Changes) && start.Mark.Sum == startSum(botID, userID, conversationID, start)
}

var sumSeed = maphash.MakeSeed()

// startSum hashes what start holds for the user in the conversation.
func startSum(botID, userID, conversationID string, start *store.TurnStart) uint64 {
	var h maphash.Hash
	h.SetSeed(sumSeed)
	str := func(v string) { h.WriteString(v); h.WriteByte(0) }
	num := func(v int64) { var b [8]byte; binary.LittleEndian.PutUint64(b[:], uint64(v)); h.Write(b[:]) }
	tags := func(m map[string]string) {
		var sum uint64 // in any order
		for k, v := range m {
			sum += maphash.String(sumSeed, k+"\x00"+v)
		}
		num(int64(len(m)))
		num(int64(sum))
	}
	// row hashes a user's or a conversation's columns, as GetTurn reads them.
	row := func(kind byte, cols [4]string, created, updated time.Time, m map[string]string) {
		h.WriteByte(kind)
		for _, v := range cols {
			str(v)
		}
		num(ms(created))
		num(ms(updated))
		tags(m)
	}
	str(botID)
	str(userID)
	str(conversationID)
	if u := start.User; u != nil {
		row(1, [4]string{u.ID, u.Name, u.PictureURL, u.Profile}, u.CreatedAt, u.UpdatedAt, u.Tags)
	}
	if c := start.Conversation; c != nil {
		row(2, [4]string{c.ID, c.OwnerID, c.Integration, c.Channel}, c.CreatedAt, c.UpdatedAt, c.Tags)
	}
	for i, st := range [...][]byte{start.UserState, start.ConvState, start.BotState} {
		if st != nil {
			h.WriteByte(byte(3 + i))
			h.Write(st)
			h.WriteByte(0)
		}
	}
	return h.Sum64()
}
