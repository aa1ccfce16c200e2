package gen

import "k8s.io/client-go/tools/record"

// DrainEvents returns the Events rec holds, in the order they were
// recorded, and leaves it empty.
func DrainEvents(rec *record.FakeRecorder) []string {
	var out []string
	for {
		select {
		case e := <-rec.Events:
			out = append(out, e)
		default:
			return out
		}
	}
}
