package cliutil

import "testing"

func TestCount(t *testing.T) {
	tests := []struct {
		n    int
		noun string
		want string
	}{
		{n: 0, noun: "node", want: "0 nodes"},
		{n: 1, noun: "node", want: "1 node"},
		{n: 2, noun: "container", want: "2 containers"},
	}
	for _, tt := range tests {
		if got := Count(tt.n, tt.noun); got != tt.want {
			t.Errorf("Count(%d, %q) = %q, want %q", tt.n, tt.noun, got, tt.want)
		}
	}
}
