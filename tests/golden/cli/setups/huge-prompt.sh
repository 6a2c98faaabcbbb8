# a prompt of 200000 bytes: more than one argv string may hold (131072)
head -c 200000 /dev/zero | tr '\000' x >huge-prompt.txt
