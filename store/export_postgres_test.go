package store

import "time"

// SetRelisten sets how long a Postgres's notification hub waits before listening again after its connection
// dropped. Call it before the first Watch.
func SetRelisten(p *Postgres, d time.Duration) { p.hub.relisten = d }

// Listening reports whether the notification hub holds a listening connection.
func Listening(p *Postgres) bool { return p.hub.listening.Load() }
