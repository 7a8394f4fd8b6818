module github.com/smallinit/smallinit

go 1.26.0

require (
	github.com/BurntSushi/toml v1.6.0
	github.com/alecthomas/kong v1.17.0
	golang.org/x/sys v0.50.0
)
