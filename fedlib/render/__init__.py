"""What a chapter does around its content: executing a notebook, its frame, figures
and prose, and the pages generated from all chapters (scorecard, findings, status)."""
