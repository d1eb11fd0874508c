package gossip

// Reports returns every report this node holds, sorted by check then checker.
func (n *Node) Reports() []Report {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.regions(n.table.Reports())
}

// ReportsFor returns the reports of one check, sorted by checker.
func (n *Node) ReportsFor(check string) []Report {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.regions(n.table.ReportsFor(check))
}

// regions fills in the regions the table has not learnt. Called with n.mu held.
func (n *Node) regions(rs []Report) []Report {
	for i := range rs {
		if rs[i].Region == "" {
			rs[i].Region = n.members[rs[i].Checker].Region
		}
	}
	return rs
}
