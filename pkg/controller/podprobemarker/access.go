package podprobemarker

import (
	"context"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"
	authorizationv1client "k8s.io/client-go/kubernetes/typed/authorization/v1"
	"k8s.io/utils/clock"

	"github.com/nodekruise/kruise/pkg/contract/nodeprobe"
)

const (
	// allowedFor is how long a SubjectAccessReview that allowed exec is trusted: a right revoked
	// since takes its exec probes off within this time.
	allowedFor = 5 * time.Minute
	// refusedFor is how long a refusal is: a right granted since is noticed within this time.
	refusedFor = time.Minute
	// refreshAhead: an answer that expires this soon is asked again now, so that the answers of
	// one node's pods, asked at different times, are renewed together by one sync.
	refreshAhead = 30 * time.Second
	// sweepEvery is how often answers no one asked for again are forgotten.
	sweepEvery = time.Minute
)

// gateKey is one cached answer: a requester (encoded), a pod (by name, as a
// SubjectAccessReview names it, and uid, so that a new pod of the same name is asked about).
type gateKey struct {
	requester string
	namespace string
	name      string
	uid       types.UID
}

type cachedVerdict struct {
	verdict
	expires time.Time
}

// gate asks the API server whether a marker's requester may exec into a pod, and caches the
// answers.
type gate struct {
	sars  authorizationv1client.SubjectAccessReviewInterface
	clock clock.Clock

	mu        sync.Mutex
	answers   map[gateKey]cachedVerdict
	lastSweep time.Time
}

func newGate(sars authorizationv1client.SubjectAccessReviewInterface, clk clock.Clock) *gate {
	return &gate{sars: sars, clock: clk, answers: map[gateKey]cachedVerdict{}, lastSweep: clk.Now()}
}

// answer answers qs, from the cache or asking; next is when the earliest answer used should be
// renewed (zero when none was used).
func (g *gate) answer(ctx context.Context, qs []question) (map[execKey]verdict, time.Duration, error) {
	if len(qs) == 0 {
		return nil, 0, nil
	}
	now := g.clock.Now()
	g.sweep(now)
	out := make(map[execKey]verdict, len(qs))
	var earliest time.Time
	for _, q := range qs {
		k := gateKey{requester: q.requester.Encode(), namespace: q.namespace, name: q.pod, uid: q.key.pod}
		g.mu.Lock()
		c, ok := g.answers[k]
		g.mu.Unlock()
		if !ok || !c.expires.After(now.Add(refreshAhead)) {
			d, err := nodeprobe.AskExec(ctx, g.sars, q.requester, q.namespace, q.pod)
			if err != nil {
				return nil, 0, err
			}
			ttl := refusedFor
			if d.Allowed {
				ttl = allowedFor
			}
			c = cachedVerdict{verdict: verdict{allowed: d.Allowed, denied: d.Denied}, expires: now.Add(ttl)}
			g.mu.Lock()
			g.answers[k] = c
			g.mu.Unlock()
		}
		out[q.key] = c.verdict
		if earliest.IsZero() || c.expires.Before(earliest) {
			earliest = c.expires
		}
	}
	// Come back when the earliest answer is due to be renewed.
	next := earliest.Sub(now) - refreshAhead
	if next < time.Second {
		next = time.Second
	}
	return out, next, nil
}

// sweep forgets expired answers, at most once per sweepEvery: those of pods gone, or of
// requesters no longer asked about.
func (g *gate) sweep(now time.Time) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if now.Sub(g.lastSweep) < sweepEvery {
		return
	}
	g.lastSweep = now
	for k, c := range g.answers {
		if !c.expires.After(now) {
			delete(g.answers, k)
		}
	}
}

// size is how many answers are cached (tests).
func (g *gate) size() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return len(g.answers)
}
