package e2e

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"shortlink.dev/api"
)

// TestImpS11RevokedKeyStopsImport: an import whose API key is revoked while
// it runs stops at its next batch, canceled with why; the links of the
// batches before stay, none after.
func TestImpS11RevokedKeyStopsImport(t *testing.T) {
	needBinary(t)
	t.Parallel()
	const n = 3000
	file := exportCSV(t, newTarget(t), n)

	s := startServer(t, t.TempDir(), "SHORTLINK_BOOTSTRAP_API_KEY="+randomKey(), "SHORTLINK_IMPORT_PAUSE=300ms")
	tg := s.Target
	w := tg.NewWorkspace(t, "pro")
	importer := tg.NewKey(t, w.ID, "links:write", "links:read")
	r := tg.postImport(t, importer.Key, "source", "csv", "file", file)
	if r.Status != http.StatusAccepted {
		t.Fatalf("%s", r)
	}
	var j api.ImportJob
	r.Data(t, &j)
	// Revoke the key once a batch is in, before the end.
	deadline := time.Now().Add(time.Minute)
	for {
		cur := tg.importJob(t, w.Key, j.ID)
		if cur.Read > 0 && cur.Read < n {
			break
		}
		if cur.Read == n || time.Now().After(deadline) {
			t.Fatalf("no moment to revoke the key: %+v", cur)
		}
		time.Sleep(20 * time.Millisecond)
	}
	tg.API(t, w.Key, "DELETE", "/api-keys/"+importer.ID, nil).wantNoContent(t)
	done := tg.awaitImport(t, w.Key, j.ID, 2*time.Minute)
	if done.Status != api.ImportCanceled || done.Error == nil || !strings.Contains(*done.Error, "revoked") ||
		done.Created == 0 || done.Created >= n || done.FinishedAt == nil {
		t.Fatalf("after the revocation: %+v (error %v)", done, done.Error)
	}
	if _, meta := tg.listLinks(t, w.Key, "?perPage=1"); meta.Total != int(done.Created) {
		t.Fatalf("%d links, the job created %d", meta.Total, done.Created)
	}
}
