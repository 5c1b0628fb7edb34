package store

import "time"

// SetRelisten sets how long a Postgres's notification hub waits before listening again after its connection
// dropped. Call it before the first Watch.
func SetRelisten(p *Postgres, d time.Duration) { p.hub.relisten = d }

// Listening reports whether the notification hub holds a listening connection.
func Listening(p *Postgres) bool { return p.hub.listening.Load() }

// SetNoNotify makes a Postgres behave as on a server without LISTEN/NOTIFY (CockroachDB, YugabyteDB): it neither
// announces its commits nor listens, and Watch polls.
func SetNoNotify(p *Postgres) { p.notify = false }
