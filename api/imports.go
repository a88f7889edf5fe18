package api

import "time"

// ImportJob is an import of another product's export into the workspace's
// links (POST /imports): its progress, counted in rows.
type ImportJob struct {
	ID string `json:"id"`
	// Source is bitly, dub, shlink, kutt, yourls or csv.
	Source string `json:"source"`
	// Status is queued, running, done, failed or canceled.
	Status string `json:"status"`
	// Total is the number of rows in the file.
	Total int64 `json:"total"`
	// Read is how many rows the job has read so far.
	Read int64 `json:"read"`
	// Created is how many links it created.
	Created int64 `json:"created"`
	// Skipped is how many rows it skipped (a link holds them already, or a
	// conflict with onConflict skip); each is in the report.
	Skipped int64 `json:"skipped"`
	// Failed is how many rows it could not import; each is in the report.
	Failed int64 `json:"failed"`
	// OnConflict is skip or suffix.
	OnConflict string `json:"onConflict"`
	// FileName is the name the file was sent with.
	FileName string `json:"fileName"`
	// FileSize is the file's size in bytes.
	FileSize int64 `json:"fileSize"`
	// Error says why a failed job failed; null otherwise.
	Error *string `json:"error"`
	// ReportURL is where the CSV of the skipped and failed rows is.
	ReportURL  string     `json:"reportUrl"`
	CreatedAt  time.Time  `json:"createdAt"`
	UpdatedAt  time.Time  `json:"updatedAt"`
	FinishedAt *time.Time `json:"finishedAt"`
}

// The statuses of an import job.
const (
	ImportQueued   = "queued"
	ImportRunning  = "running"
	ImportDone     = "done"
	ImportFailed   = "failed"
	ImportCanceled = "canceled"
)
