module shortlink.dev/edge

go 1.26

require shortlink.dev/shared v0.0.0

replace shortlink.dev/shared => ../shared
