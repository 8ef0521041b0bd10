# The plots of scripts/bench.sh --plot, from the time series the benchmarks write with
# --series. Called as: gnuplot -e "data='DIR'; pngs='DIR'" plots.gp
set terminal pngcairo size 900,420 font "DejaVu Sans,10"
set grid
set key top right
set xlabel "seconds"

# (b) Replicated throughput: records/s committed on each node while 8 clients insert on n1.
set output pngs."/replication-throughput.png"
set title "3 nodes: records/s committed on each node (writes on n1, replicated to n2 and n3)"
set ylabel "records/s"
plot data."/replication_throughput.dat" using 1:2 with lines lw 2 title "n1 (origin)", \
     "" using 1:3 with lines lw 2 title "n2", \
     "" using 1:4 with lines lw 2 title "n3"

# (d) Catch-up: n3 restarted after 100k records were written without it.
set output pngs."/catchup-lag.png"
set title "Catch-up after a restart: n3's lag behind each peer, and its records"
set ylabel "lag (log entries)"
set y2label "records on n3"
set y2tics
set ytics nomirror
plot data."/catchup_lag.dat" using 1:2 with lines lw 2 title "n3 behind n1", \
     "" using 1:3 with lines lw 2 title "n3 behind n2", \
     "" using 1:4 axes x1y2 with lines lw 1 dt 2 title "records on n3"

# (f) Drops under load: peers' lag behind n1 and the other table's writes/s; shaded: drops.
set output pngs."/drop-lag.png"
set title "Drops of a table with 8 writers on it: peers' lag and the other table's writes"
set ylabel "lag (log entries)"
set y2label "other table, writes/s"
stats data."/drop_lag.dat" using 4 name "W" nooutput
top = W_max * 1.15
set yrange [0:10<*]
set y2range [0:top]
plot data."/drop_events.dat" using 1:($2 > 0 ? top : 0) with fillsteps fs solid 0.25 noborder \
         lc rgb "#888888" axes x1y2 title "drop in progress", \
     data."/drop_lag.dat" using 1:2 with lines lw 2 title "n2 behind n1", \
     "" using 1:3 with lines lw 2 title "n3 behind n1", \
     "" using 1:4 axes x1y2 with lines lw 1 title "other table, writes/s"
set autoscale y
set autoscale y2

# (d) Full copy of 1M records to a new node.
set output pngs."/full-copy.png"
set title "Full copy to a new node: progress and rows/s"
set ylabel "percent"
set y2label "rows/s"
plot data."/copy_progress.dat" using 1:2 with lines lw 2 title "percent copied", \
     "" using 1:3 axes x1y2 with lines lw 1 title "rows/s (node's estimate)"
