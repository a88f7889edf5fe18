module shortlink.dev/api

go 1.26.0
