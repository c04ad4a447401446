package events_test

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/agentmem/agentmem/pkg/events"
)

func ExampleBinaryMsg() {
	subject, err := events.TurnSubject("acme", "s1")
	if err != nil {
		panic(err)
	}
	at := time.Date(2026, 11, 30, 10, 0, 0, 0, time.UTC)
	ev, err := events.NewEvent("turn-0001", events.TypeTurn, "urn:agent:demo", at,
		events.Turn{Role: events.RoleUser, Content: "I like Go", User: "u1"})
	if err != nil {
		panic(err)
	}
	ev.SetSubject("first turn ü")
	msg, err := events.BinaryMsg(subject, ev)
	if err != nil {
		panic(err)
	}
	msg.Header.Set(events.HeaderMsgID, events.MsgID("acme", "s1", ev.ID()))

	fmt.Println(msg.Subject)
	keys := make([]string, 0, len(msg.Header))
	for k := range msg.Header {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		fmt.Printf("%s: %s\n", k, msg.Header.Get(k))
	}
	fmt.Println(string(msg.Data))

	back, err := events.Decode(msg)
	if err != nil {
		panic(err)
	}
	turn, err := events.DecodeData[events.Turn](back)
	if err != nil {
		panic(err)
	}
	fmt.Printf("%s said %q (%s)\n", turn.User, turn.Content, back.Subject())
	// Output:
	// memory.turns.acme.s1
	// Nats-Msg-Id: acme.s1.turn-0001
	// ce-id: turn-0001
	// ce-source: urn:agent:demo
	// ce-specversion: 1.0
	// ce-subject: first%20turn%20%C3%BC
	// ce-time: 2026-11-30T10:00:00Z
	// ce-type: agentmem.turn.v1
	// content-type: application/json
	// {"role":"user","content":"I like Go","user":"u1"}
	// u1 said "I like Go" (first turn ü)
}

func ExampleParseTurnSubject() {
	for _, subject := range []string{
		"memory.turns.acme.s1",
		"7.memory.turns.acme.s1",
		"memory.turns.acme.s1.extra",
		"memory.turns.a.b.c.d",
		"memory.turns.acme.bad*session",
	} {
		addr, err := events.ParseTurnSubject(subject)
		if err != nil {
			fmt.Println("error:", err)
			continue
		}
		fmt.Printf("tenant=%s session=%s partition=%d subject=%s\n", addr.Tenant, addr.Session, addr.Partition, addr.Subject())
	}
	// Output:
	// tenant=acme session=s1 partition=-1 subject=memory.turns.acme.s1
	// tenant=acme session=s1 partition=7 subject=memory.turns.acme.s1
	// error: turn subject "memory.turns.acme.s1.extra": has 3 tokens after the prefix, want 2 (<tenant>.<session>)
	// error: turn subject "memory.turns.a.b.c.d": has 4 tokens after the prefix, want 2 (<tenant>.<session>)
	// error: turn subject "memory.turns.acme.bad*session": session "bad*session": must match [A-Za-z0-9_-]{1,64}
}

func ExampleNewMsg() {
	at := time.Date(2026, 11, 30, 10, 0, 0, 0, time.UTC)
	msg, err := events.NewMsg(context.Background(), "acme", "s1", "sum_0f1e", events.TypeSummary, "agentmem/compressor", at,
		events.Summary{Session: "s1", User: "u1", SummaryID: "sum_0f1e", Content: "[Conversation summary] …"})
	if err != nil {
		panic(err)
	}
	fmt.Println(msg.Subject)
	fmt.Println(msg.Header.Get(events.HeaderMsgID))
	fmt.Println(msg.Header.Get("ce-subject"))
	// Output:
	// memory.summaries.acme.s1
	// acme.s1.sum_0f1e
	// s1
}

func ExampleParseEventSubject() {
	for _, subject := range []string{
		"memory.pressure.acme.s1",
		"3.memory.summaries.acme.s1",
		"memory.facts.acme.alice",
		"memory.retrieve.acme",
	} {
		a, err := events.ParseEventSubject(subject)
		if err != nil {
			fmt.Println("error:", err)
			continue
		}
		fmt.Printf("kind=%s tenant=%s key=%s partition=%d\n", a.Kind, a.Tenant, a.Key, a.Partition)
	}
	// Output:
	// kind=pressure tenant=acme key=s1 partition=-1
	// kind=summaries tenant=acme key=s1 partition=3
	// kind=facts tenant=acme key=alice partition=-1
	// error: subject "memory.retrieve.acme": unknown kind "retrieve": want turns, pressure, summaries, facts, dlq, ended or edits
}
