//go:build !race

package qrcodes

// raceEnabled is set in a test binary built with -race.
const raceEnabled = false
