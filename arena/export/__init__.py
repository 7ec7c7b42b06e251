"""Votes in and out, in Chatbot Arena's `clean_battle` format plus our fields."""
