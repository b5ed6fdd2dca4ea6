"""Layer 3, compaction: the pure mechanics of cutting and reassembling a conversation.

Where the protected head ends and the verbatim tail starts, pruning old tool output,
the handoff's framing and placement, pairing repair, media stripping, the plan of one
compaction and its assembly. No summarizing happens here.
"""
