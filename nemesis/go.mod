module github.com/vesta-go/vesta/nemesis

go 1.26.0

replace github.com/vesta-go/vesta => ..
