package recorder

import (
	"crypto/sha256"
	"encoding/binary"
	"hash"
	"io"
	"time"

	"golang.org/x/time/rate"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/lru"
)

const (
	// cacheSize bounds both caches, as record's do.
	cacheSize = 4096
	// Each involved object may have spamBurst Events at once, then one per
	// spamRefill (record's defaults).
	spamBurst  = 25
	spamRefill = 5 * time.Minute
)

// key identifies an involved object (spam filter) or an Event's content
// (dedup). It is a digest rather than the fields themselves so that a full
// cache costs 4096 small entries however long the messages and names are:
// the daemon's memory budget is tight, and a message can run to 1 KiB.
type key [sha256.Size]byte

// written is what a repeat needs of the Event written before: where it is
// and the count it was last given.
type written struct {
	namespace, name string
	count           int32
}

// correlator holds the worker's state for the spam filter and for dedup. Only
// the worker goroutine uses it. (lru.Cache locks anyway; uncontended, that
// costs next to nothing.)
type correlator struct {
	limiters *lru.Cache // objectKey → *rate.Limiter
	seen     *lru.Cache // contentKey → written
}

func newCorrelator() *correlator {
	return &correlator{limiters: lru.New(cacheSize), seen: lru.New(cacheSize)}
}

// allow takes a token from the bucket of e's involved object, as of the time
// e occurred (so Events queued behind a slow write are judged by when they
// happened, not by when the worker got to them). An object evicted from the
// cache starts again with a full bucket: that bounds memory, and an object
// quiet long enough to be evicted from 4096 is not the one spamming.
func (c *correlator) allow(e *corev1.Event) bool {
	k := objectKey(e)
	var l *rate.Limiter
	if v, ok := c.limiters.Get(k); ok {
		l = v.(*rate.Limiter)
	} else {
		l = rate.NewLimiter(rate.Every(spamRefill), spamBurst)
		c.limiters.Add(k, l)
	}
	return l.AllowN(e.LastTimestamp.Time, 1)
}

// previous returns the Event last written with content k, if any is known.
func (c *correlator) previous(k key) (written, bool) {
	v, ok := c.seen.Get(k)
	if !ok {
		return written{}, false
	}
	return v.(written), true
}

// remember records the Event written for content k.
func (c *correlator) remember(k key, w written) { c.seen.Add(k, w) }

// forget drops what is known about content k, after a failed write: its
// next occurrence then creates an Event rather than patching one that may
// not be there.
func (c *correlator) forget(k key) { c.seen.Remove(k) }

// objectKey identifies the spam filter's bucket: the source and the involved
// object.
func objectKey(e *corev1.Event) key {
	o := &e.InvolvedObject
	return digest(e.Source.Component, e.Source.Host, o.Kind, o.Namespace, o.Name, string(o.UID))
}

// contentKey identifies identical Events: the same source, involved object
// (with fieldPath), type, reason and message.
func contentKey(e *corev1.Event) key {
	o := &e.InvolvedObject
	return digest(e.Source.Component, e.Source.Host,
		o.Kind, o.APIVersion, o.Namespace, o.Name, string(o.UID), o.FieldPath,
		e.Type, e.Reason, e.Message)
}

// digest hashes fields, each preceded by its length so that no two lists of
// fields hash the same input ("ab","c" versus "a","bc").
func digest(fields ...string) key {
	h := sha256.New()
	for _, f := range fields {
		writeField(h, f)
	}
	var k key
	h.Sum(k[:0])
	return k
}

// writeField adds f to h. (A hash.Hash never returns a write error.)
func writeField(h hash.Hash, f string) {
	var n [binary.MaxVarintLen64]byte
	_, _ = h.Write(n[:binary.PutUvarint(n[:], uint64(len(f)))])
	_, _ = io.WriteString(h, f)
}
