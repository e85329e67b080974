module tuttibench

go 1.22
