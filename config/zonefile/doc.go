// Package zonefile reads an RFC 1035 master file into a Vigil configuration document: one
// zone, one record set per name and type. The file is a zone file as BIND, NSD, Knot and DNS
// providers write and export them, and the document one that `vigil validate` accepts.
//
// It owns the reading of the file's text and the mapping of its records to record sets:
//
//   - The text is split into entries (a directive, or one record that parentheses may spread
//     over several lines) by a lexer of its own, so that an error in one record costs only that
//     record: every malformed entry is reported with its line, and reading goes on with the next
//     one. Each record entry is then read by miekg/dns's zone parser on its own, with the
//     origin, default TTL and owner that the entries before it set.
//   - $ORIGIN, $TTL and $INCLUDE are followed ($INCLUDE relative to the file that names it, at
//     most MaxIncludeDepth deep, through the Options' reader); $GENERATE is refused with its
//     line.
//   - Each record's data is written as a record value and read back by package rdata, the one
//     parser of record data that validation and the locations use: a record is imported only
//     when the value Vigil would serve is, byte for byte, the record in the file (domain names
//     lower-cased).
//   - What Vigil cannot serve as written (other types, other classes, DNSSEC records of a
//     pre-signed zone, names and values it does not hold, data below a delegation that is not
//     glue, differing TTLs in one set) is left out or changed, and each such record is listed
//     with its line; nothing is dropped silently. The document is validated as `vigil
//     validate` does, and whatever validation still refuses is left out and listed too.
//
// Nothing here performs I/O except through Options.ReadFile.
package zonefile
