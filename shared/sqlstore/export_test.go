package sqlstore

import (
	"testing"
	"time"
)

// SetPruneBatch makes PruneAudit delete batch entries a statement and
// pause for pause between two, until the test ends.
func SetPruneBatch(t testing.TB, batch int, pause time.Duration) {
	oldBatch, oldPause := pruneBatch, prunePause
	pruneBatch, prunePause = batch, pause
	t.Cleanup(func() { pruneBatch, prunePause = oldBatch, oldPause })
}

// InsertArrays is insertArrays, for a test on a table of its own.
var InsertArrays = insertArrays
