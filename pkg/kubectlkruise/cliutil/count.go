package cliutil

import "fmt"

// Count is "1 <noun>" or "<n> <noun>s": enough for the nouns the commands
// count (node, container, pod), all of which take a plain -s.
func Count(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}
