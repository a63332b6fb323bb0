module shardhash

go 1.19
