module github.com/vesta-go/vesta/tools/benchcompare

go 1.26.0
