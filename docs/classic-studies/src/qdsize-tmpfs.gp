set terminal pngcairo size 900,620 font 'DejaVu Sans,11'
set output '../qdsize-tmpfs.png'
set title "Where striping pays: random reads, RAID 0 x2 / one member\ntmpfs members (the CPU and NBD path are the limit)"
set xlabel 'transfer size'
set ylabel 'queue depth (outstanding I/Os)'
set xtics ('4K' 0, '64K' 1, '1M' 2)
set ytics ('1' 0, '4' 1, '32' 2)
set xrange [-0.5:2.5]
set yrange [-0.5:2.5]
set cblabel 'ratio (RAID 0 x2 / one member)'
set cbrange [0.5:2.0]
set palette defined (0.5 '#b2182b', 0.9 '#f4a582', 0.97 '#f7f7f7', 1.03 '#f7f7f7', 1.5 '#92c5de', 2.0 '#2166ac')
set tics nomirror
plot 'qdsize-tmpfs.dat' using 1:2:3 with image notitle, \
     '' using 1:2:(sprintf('%.2f', $3)) with labels font ',11' notitle
