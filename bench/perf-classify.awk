# perf-classify.awk: where one server's CPU samples went, by class.
#
# Input: `perf script --pid PID -F comm,tid,ip,sym,dso` of a `perf record -g`
# (each sample is a header line "comm tid" and then its frames, leaf first,
# "ip sym (dso)"). Output, tab-separated:
#   C <samples> <% of the server's samples> <class>
#   T <samples> <%> <leaf symbol (dso)>
#   N <total samples>
# Each sample counts once, in the first class that matches, in this order:
#   parity: ISA-L            leaf in libisal (xor_gen, xor_gen_avx512, ...)
#   parity: plugin loop      leaf xor_loop / parity_xor: the plugin's own XOR,
#                            for buffers ISA-L cannot take (not 32-byte aligned)
#   page faults              any frame exc_page_fault: first touch of fresh
#                            (just mmapped) buffers, whatever touched them
#   memcpy/memmove (libc)    leaf memcpy/memmove in libc: user-space copies
#   kernel: member I/O       kernel leaf under shmem_/do_preadv/do_pwritev/...:
#                            tmpfs copies of member preadv2/pwritev2
#   kernel: NBD socket       kernel leaf under unix_/sock_/skb_...: the socket
#   kernel: other            scheduler, futex, syscall entry ...
#   plugin: other code, nbdkit core, libc: other, other
# User-space frames past the leaf are not used: the builds have no frame
# pointers, so only kernel call chains are trustworthy.
function classify(   i, all, leafdso, leafsym, c) {
	if (nf == 0) return
	leafsym = sym[1]; leafdso = dso[1]
	all = ""
	for (i = 1; i <= nf; i++) all = all " " sym[i]
	if (leafdso ~ /libisal/) c = "parity: ISA-L (xor_gen*)"
	else if (leafdso ~ /raid-plugin/ && leafsym ~ /^(xor_loop|parity_xor)/) c = "parity: plugin loop (unaligned buffers)"
	else if (all ~ / (asm_)?exc_page_fault/) c = "page faults (first touch of fresh buffers)"
	else if (leafdso ~ /libc/ && leafsym ~ /mem(cpy|move)/) c = "memcpy/memmove (libc, user space)"
	else if (leafdso ~ /kernel/ && all ~ / (shmem_|do_preadv|do_pwritev|filemap_|vfs_writev|vfs_readv|vfs_iter_|io_uring|io_wq)/) c = "kernel: member I/O (tmpfs copies)"
	else if (leafdso ~ /kernel/ && all ~ / (unix_|sock_|skb_|__skb|__sys_sendto|__sys_recv)/) c = "kernel: NBD socket"
	else if (leafdso ~ /kernel/) c = "kernel: other (scheduler, futex, syscall entry)"
	else if (leafdso ~ /raid-plugin/) c = "plugin: other code"
	else if (leafdso ~ /^nbdkit$/) c = "nbdkit core"
	else if (leafdso ~ /libc/) c = "libc: other (locks, syscall stubs)"
	else c = "other"
	n[c]++; tot++
	top[leafsym " (" leafdso ")"]++
	nf = 0
}
/^[^ \t]/ { classify(); next }
/^[ \t]+[0-9a-f]+ / {
	line = $0; sub(/^[ \t]+[0-9a-f]+ /, "", line)
	d = line; sub(/.*\(/, "", d); sub(/\)[ \t]*$/, "", d); sub(/.*\//, "", d)
	s = line; sub(/ \([^(]*\)[ \t]*$/, "", s); sub(/\+0x[0-9a-f]+$/, "", s)
	nf++; sym[nf] = s; dso[nf] = d
}
END {
	classify()
	for (c in n) printf "C\t%d\t%.1f\t%s\n", n[c], 100 * n[c] / tot, c
	for (s in top) printf "T\t%d\t%.1f\t%s\n", top[s], 100 * top[s] / tot, s
	printf "N\t%d\n", tot
}
