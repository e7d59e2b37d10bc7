set terminal pngcairo size 1500,620 font 'DejaVu Sans,11'
set output '../chunk-tmpfs.png'
set grid ytics lc rgb '#dddddd'
set border 3
set tics nomirror
set multiplot title 'Chunk size, tmpfs members (the CPU and NBD path are the limit): ratio to one member (same run)' font ',12'
set logscale x 2
set xrange [2.66667:768]
set xlabel 'chunk (log scale)'
set ylabel 'throughput / one member'
set tmargin at screen 0.88
set bmargin at screen 0.12
set title 'RAID 0 x2'
set lmargin at screen 0.06
set rmargin at screen 0.4
set yrange [0:2.6]
unset key
plot 2 title 'ideal: 2 x' dt 2 lw 2 lc rgb '#999999', \
     1 notitle lw 1 lc rgb '#000000', \
     'chunk-tmpfs-x2.dat' using 1:3:xtic(2) with linespoints lw 2 pt 5 ps 1.2 lc rgb '#1b9e77' title '1M seq read QD8', \
     'chunk-tmpfs-x2.dat' using 1:4:xtic(2) with linespoints lw 2 pt 6 ps 1.2 lc rgb '#d95f02' title '4K rand read QD8', \
     'chunk-tmpfs-x2.dat' using 1:5:xtic(2) with linespoints lw 2 pt 7 ps 1.2 lc rgb '#7570b3' title '16K rand read QD8', \
     'chunk-tmpfs-x2.dat' using 1:6:xtic(2) with linespoints lw 2 pt 8 ps 1.2 lc rgb '#e7298a' title '64K rand read QD8', \
     'chunk-tmpfs-x2.dat' using 1:7:xtic(2) with linespoints lw 2 pt 9 ps 1.2 lc rgb '#66a61e' title 'database 4K QD128', \
     'chunk-tmpfs-x2.dat' using 1:8:xtic(2) with linespoints lw 2 pt 10 ps 1.2 lc rgb '#e6ab02' title 'file server 16K QD128', \
     'chunk-tmpfs-x2.dat' using 1:9:xtic(2) with linespoints lw 2 pt 11 ps 1.2 lc rgb '#a6761d' title 'workstation 16K QD1', \
     'chunk-tmpfs-x2.dat' using 1:10:xtic(2) with linespoints lw 2 pt 12 ps 1.2 lc rgb '#666666' title '4K rand write QD1'

set title 'RAID 0 x4'
set lmargin at screen 0.47
set rmargin at screen 0.81
set yrange [0:4.6]
set key at screen 0.99, graph 0.5 right center font ',10' box opaque
plot 4 title 'ideal: 4 x' dt 2 lw 2 lc rgb '#999999', \
     1 notitle lw 1 lc rgb '#000000', \
     'chunk-tmpfs-x4.dat' using 1:3:xtic(2) with linespoints lw 2 pt 5 ps 1.2 lc rgb '#1b9e77' title '1M seq read QD8', \
     'chunk-tmpfs-x4.dat' using 1:4:xtic(2) with linespoints lw 2 pt 6 ps 1.2 lc rgb '#d95f02' title '4K rand read QD8', \
     'chunk-tmpfs-x4.dat' using 1:5:xtic(2) with linespoints lw 2 pt 7 ps 1.2 lc rgb '#7570b3' title '16K rand read QD8', \
     'chunk-tmpfs-x4.dat' using 1:6:xtic(2) with linespoints lw 2 pt 8 ps 1.2 lc rgb '#e7298a' title '64K rand read QD8', \
     'chunk-tmpfs-x4.dat' using 1:7:xtic(2) with linespoints lw 2 pt 9 ps 1.2 lc rgb '#66a61e' title 'database 4K QD128', \
     'chunk-tmpfs-x4.dat' using 1:8:xtic(2) with linespoints lw 2 pt 10 ps 1.2 lc rgb '#e6ab02' title 'file server 16K QD128', \
     'chunk-tmpfs-x4.dat' using 1:9:xtic(2) with linespoints lw 2 pt 11 ps 1.2 lc rgb '#a6761d' title 'workstation 16K QD1', \
     'chunk-tmpfs-x4.dat' using 1:10:xtic(2) with linespoints lw 2 pt 12 ps 1.2 lc rgb '#666666' title '4K rand write QD1'

unset multiplot
