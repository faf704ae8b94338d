%% Sample Erlang module for outlines.
-module(shapes).
-behaviour(gen_server).

-export([area/1, total/1]).
-export([init/1]).

-record(circle, {
	radius = 1.0 :: float(),
	%% its name, shown in logs.
	name = <<"circle">> :: binary()
}).

-type shape() :: #circle{} | {square, float()}.

-spec area(shape()) -> float().
area(#circle{radius=R}) ->
	SecretSquare = R * R,
	math:pi() * SecretSquare;
area({square, S}) ->
	S * S.

-spec total([shape()])
	-> float().
total(Shapes) ->
	lists:sum([area(S) || S <- Shapes]).

init([]) -> {ok, #{}}.

'quoted name'(X) ->
	secret_helper(X).

secret_helper(X) -> X.
