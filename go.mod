module github.com/fenceline/fenceline

go 1.26.0
