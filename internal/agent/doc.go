// Package agent keeps a tenant's agents as versioned resources and the
// models they may use, and resolves the agent version each run executes.
//
// An agent is a stored identity plus immutable versions of its definition
// (Spec): every change makes a new version, one version is published, and
// publishing an older one is a rollback. A run resolves its version once,
// at its start (Resolve), and records it; its continuations after a
// person's decision use that version (Exact), so a run never mixes two.
// The built-in default agent (BuiltInID) is the server's own
// configuration and has no versions.
//
// Roles: admins create, change, publish and archive agents and set the
// tenant's default; members read and use them. Another tenant's agent is
// not found.
//
// Caching: every replica caches agents and the tenants' settings; a change
// on one replica is announced on the bus (bus.ControlAgent), every replica
// drops its copy on hearing it, and nothing is cached while the control
// stream is down. Cached copies also expire (Config.MaxStale), a safety net
// for a lost message. Versions never change and are cached without expiry.
//
// The models file (Models) names the models a server may call, built
// through the provider adapters; it is reloaded when it changes (see
// Models). Keys are read from the variables the file names and never
// leave the process.
package agent
