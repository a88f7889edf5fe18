module shortlink.dev/benchmarks

go 1.26

require shortlink.dev/shared v0.0.0

replace shortlink.dev/shared => ../shared
