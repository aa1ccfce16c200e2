// Package sidecarrules holds what the SidecarSet injection webhook, the SidecarSet webhooks and the
// SidecarSet controller agree on: which pods a SidecarSet selects, the hashes that tell an
// image-only change from any other, and the pod annotations (OpenKruise's keys and JSON shapes)
// that record what was injected at which version. It reads API objects and writes none.
package sidecarrules
