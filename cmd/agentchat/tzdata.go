package main

// The binary carries the IANA time zone database, so a zone named in the
// configuration (AGENTCHAT_HISTORY_TIME_ZONE) loads on hosts without one.
import _ "time/tzdata"
