set terminal pngcairo size 900,620 font 'DejaVu Sans,11'
set output '../qdsize-spindle.png'
set title "Where striping pays: random reads, RAID 0 x2 / one member\nemulated disks (5ms, 100 MB/s, 1 at a time)"
set xlabel 'transfer size'
set ylabel 'queue depth (outstanding I/Os)'
set xtics ('4K' 0, '16K' 1, '64K' 2, '256K' 3, '1M' 4)
set ytics ('1' 0, '2' 1, '4' 2, '8' 3, '16' 4, '32' 5)
set xrange [-0.5:4.5]
set yrange [-0.5:5.5]
set cblabel 'ratio (RAID 0 x2 / one member)'
set cbrange [0.5:2.0]
set palette defined (0.5 '#b2182b', 0.9 '#f4a582', 0.97 '#f7f7f7', 1.03 '#f7f7f7', 1.5 '#92c5de', 2.0 '#2166ac')
set tics nomirror
plot 'qdsize-spindle.dat' using 1:2:3 with image notitle, \
     '' using 1:2:(sprintf('%.2f', $3)) with labels font ',11' notitle
