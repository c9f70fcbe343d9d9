/** The local entries the kubelet writes at the top of every managed /etc/hosts, after its header. */
export const LOCAL_HOSTS_ENTRIES =
  '127.0.0.1\tlocalhost\n' +
  '::1\tlocalhost ip6-localhost ip6-loopback\n' +
  'fe00::0\tip6-localnet\n' +
  'fe00::0\tip6-mcastprefix\n' +
  'fe00::1\tip6-allnodes\n' +
  'fe00::2\tip6-allrouters\n';
