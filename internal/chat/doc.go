// Package chat holds the domain of agentchat that the engine, the run
// service, the store and the wire formats share: a principal's scope, its
// conversations, their messages and runs, the confirmations a run waits
// for, and the metadata an engine records on a message.
//
// It owns these shapes and nothing else: no storage, no HTTP, no wire
// format. The store persists them (store.Store), the engine reads and
// writes them through its host, and the dialects render them. A stored
// shape that several packages read (message metadata) is parsed and
// marshalled here, so its keys are written in one place.
//
// Every value belongs to a tenant and an owner; a Scope names the
// principal a query acts for, and nothing here crosses scopes.
package chat
