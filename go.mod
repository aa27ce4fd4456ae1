module plexbench

go 1.26
