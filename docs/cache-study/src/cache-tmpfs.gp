set terminal pngcairo size 1300,640 font 'DejaVu Sans,11'
set output '../cache-tmpfs.png'
set bmargin 4
set grid ytics lc rgb '#dddddd'
set border 3
set tics nomirror
set title "Write-back cache: each cache against the same array without one (same run)\ntmpfs members (the CPU and NBD path are the limit)"
set ylabel 'throughput / no cache (log scale)'
set logscale y
set yrange [0.1:2000]
set style data histogram
set style histogram errorbars gap 1.5 lw 1
set style fill solid 0.85 border -1
set boxwidth 0.9
set xtics font ',10' nomirror
set key top right box opaque
set arrow from graph 0, first 1 to graph 1, first 1 nohead lc rgb '#000000' lw 1.5
set label 'no cache' at graph 0.005, first 1 left offset 0,0.6 font ',9'
set arrow from graph 0, first 10 to graph 1, first 10 nohead dt 2 lc rgb '#999999' lw 1.5
set label '10x' at graph 0.005, first 10 left offset 0,0.6 font ',9'

plot 'cache-tmpfs.dat' using 2:3:4:xtic(1) lc rgb '#1b9e77' title 'RAID 0 x4, cache ram', \
     'cache-tmpfs.dat' using 5:6:7:xtic(1) lc rgb '#d95f02' title 'RAID 0 x4, cache log', \
     'cache-tmpfs.dat' using 8:9:10:xtic(1) lc rgb '#7570b3' title 'RAID 0 x4, nbdkit cache filter', \
     'cache-tmpfs.dat' using 11:12:13:xtic(1) lc rgb '#e7298a' title 'RAID 5 x4, cache ram', \
     'cache-tmpfs.dat' using 14:15:16:xtic(1) lc rgb '#66a61e' title 'RAID 5 x4, cache log', \
     'cache-tmpfs.dat' using 17:18:19:xtic(1) lc rgb '#e6ab02' title 'RAID 5 x4, nbdkit cache filter'
