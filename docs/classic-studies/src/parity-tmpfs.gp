set terminal pngcairo size 1150,620 font 'DejaVu Sans,11'
set output '../parity-tmpfs.png'
set grid ytics lc rgb '#dddddd'
set border 3
set tics nomirror
set title "RAID 0, 5, 10 over 4 members against one member (same run)\ntmpfs members (the CPU and NBD path are the limit)"
set ylabel 'throughput / one member'
set yrange [0:4.8]
set style data histogram
set style histogram errorbars gap 1.5 lw 1
set style fill solid 0.85 border -1
set boxwidth 0.9
set xtics font ',10' nomirror
set key top right box opaque
set arrow from graph 0, first 1 to graph 1, first 1 nohead lc rgb '#000000' lw 1.5
set label 'one member' at graph 0.005, first 1 left offset 0,0.6 font ',9'
set arrow from graph 0, first 4 to graph 1, first 4 nohead dt 2 lc rgb '#999999' lw 1.5
set label '4x' at graph 0.005, first 4 left offset 0,0.6 font ',9'

plot 'parity-tmpfs.dat' using 2:3:4:xtic(1) lc rgb '#1b9e77' title 'RAID 0 x4', \
     'parity-tmpfs.dat' using 5:6:7:xtic(1) lc rgb '#d95f02' title 'RAID 5 x4', \
     'parity-tmpfs.dat' using 8:9:10:xtic(1) lc rgb '#7570b3' title 'RAID 10 x4'
