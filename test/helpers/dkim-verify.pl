#!/usr/bin/perl
# Mail::DKIM (SpamAssassin's and Amavis's verifier; Debian's libmail-dkim-perl) as a second receiver for the DKIM tests:
# reads an email on stdin, asks the DNS server on 127.0.0.1:<port>, prints "selector algorithm result" per signature.
# Debian 12's version verifies RSA signatures; it answers "invalid" to Ed25519 (RFC 8463), which it does not know.
use strict;
use warnings;
use Mail::DKIM::Verifier;
use Mail::DKIM::DNS;
use Net::DNS::Resolver;

my ($port) = @ARGV;
Mail::DKIM::DNS::resolver(Net::DNS::Resolver->new(nameservers => ['127.0.0.1'], port => $port, udp_timeout => 5, retry => 2));
binmode STDIN;
my $dkim = Mail::DKIM::Verifier->new();
while (my $line = <STDIN>) {
  $line =~ s/\r?\n\z/\r\n/;
  $dkim->PRINT($line);
}
$dkim->CLOSE;
printf "%s %s %s\n", $_->selector, $_->algorithm, $_->result for $dkim->signatures;
