set terminal pngcairo size 900,600 font 'DejaVu Sans,11'
set output '../scaling-spindle.png'
set grid ytics lc rgb '#dddddd'
set border 3
set tics nomirror
set title "RAID 0 member scaling, emulated disks (5ms, 100 MB/s, 1 at a time)\nratio to one member, same run"
set xlabel 'members'
set ylabel 'throughput / one member'
set xrange [0.8:4.2]
set xtics 1
set yrange [0:4.5]
set key top left box opaque
set arrow from 0.8,1 to 4.2,1 nohead lc rgb '#000000' lw 1
plot x title 'ideal: N x' dt 2 lw 2 lc rgb '#999999', \
     'rp.dat' using 1:2 with lines dt 3 lw 2 lc rgb '#7570b3' title 'ideal for random QD8 (random placement)', \
     'scaling-spindle.dat' using 1:2:3:4 with yerrorlines lw 2 pt 5 ps 1.3 lc rgb '#1b9e77' title '1M seq read QD8', \
     'scaling-spindle.dat' using 1:5:6:7 with yerrorlines lw 2 pt 6 ps 1.3 lc rgb '#d95f02' title '1M seq write QD8', \
     'scaling-spindle.dat' using 1:8:9:10 with yerrorlines lw 2 pt 7 ps 1.3 lc rgb '#7570b3' title '4K rand read QD1', \
     'scaling-spindle.dat' using 1:11:12:13 with yerrorlines lw 2 pt 8 ps 1.3 lc rgb '#e7298a' title '4K rand read QD8', \
     'mpc.dat' using 1:2 with linespoints dt 4 lw 1.5 pt 6 lc rgb '#444444' title 'Maximum PC 2004, 4 PATA drives on PCI (read)'
