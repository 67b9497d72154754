//go:build !chaos

package main

import (
	"net/http"

	"github.com/redis/go-redis/v9"

	"github.com/fenceline/fenceline/election"
	"github.com/fenceline/fenceline/listener"
	"github.com/fenceline/fenceline/source"
)

// A default build has no fault hook and no --unfenced: they exist only to be broken by
// the chaos harness (go build -tags chaos; see chaos_on.go).

type faultHooks struct{}

func newFaultHooks() faultHooks               { return faultHooks{} }
func (faultHooks) configure(*election.Config) {}
func (faultHooks) handle(*http.ServeMux)      {}
func addChaosFlags(*options)                  {}

// store is the fenced store: a default build has no other.
func (h *harness) store(_ redis.UniversalClient, fenced listener.Store[source.Event], _ options) listener.Store[source.Event] {
	return fenced
}
